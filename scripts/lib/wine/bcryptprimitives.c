/*
 * bcryptprimitives.dll for Wine 8.0, which lacks it: Rust's std (1.78 and
 * later) takes its random bytes from ProcessPrng there, and a program that
 * cannot import it does not start. This one fills the buffer from
 * SystemFunction036 (RtlGenRandom), which Wine has, in chunks it accepts.
 * Built and used only by scripts/check-platforms; never shipped.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
