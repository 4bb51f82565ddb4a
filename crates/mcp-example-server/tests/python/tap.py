"""Runs a stdio program and records both directions of its traffic.

Usage: tap.py LOGFILE -- PROGRAM [ARGS...]

Each line our stdin gives the program is logged as "> LINE", each line it
writes to its stdout as "< LINE"; the traffic itself passes unchanged.
"""
import subprocess
import sys
import threading


def main() -> int:
    log_path = sys.argv[1]
    assert sys.argv[2] == "--"
    child = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    log = open(log_path, "a", buffering=1, encoding="utf-8")
    lock = threading.Lock()

    def record(prefix: str, line: bytes) -> None:
        with lock:
            log.write(prefix + line.decode("utf-8", "replace").rstrip("\n") + "\n")

    def pump_in() -> None:
        for line in sys.stdin.buffer:
            record("> ", line)
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    for line in child.stdout:
        record("< ", line)
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
