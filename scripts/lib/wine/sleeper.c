/*
 * A Windows program that ignores its stdin and only waits: the server
 * scripts/check-platforms puts behind a bridge it then kills, to see the
 * bridge's job object end the server (a real server would have exited on
 * the end of its input; this one stops only when its process tree is
 * ended). Built and used only by scripts/check-platforms; never shipped.
 */
#include <windows.h>

int main(void)
{
    Sleep(10 * 60 * 1000);
    return 0;
}
