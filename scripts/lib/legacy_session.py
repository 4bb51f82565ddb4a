"""A 2025-11-25 client session carried through a bridge the caller starts:
what scripts/check-packages and scripts/check-platforms run through each
`mcp-bridge` they check, in front of mcp-example-server."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

LINE_DEADLINE_S = 30


def fail(message: str) -> None:
    sys.exit(f"{Path(sys.argv[0]).name}: {message}")


class Session:
    """A client that speaks JSON lines to a child's stdin and stdout."""

    def __init__(self, argv: list):
        self.started = time.monotonic()
        self.child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.child.stderr), daemon=True).start()

    def send(self, message: dict) -> None:
        self.child.stdin.write(json.dumps(message) + "\n")
        self.child.stdin.flush()

    def answer(self, id_: int) -> dict:
        deadline = time.monotonic() + LINE_DEADLINE_S
        result = {}

        def read():
            for line in self.child.stdout:
                message = json.loads(line)
                if message.get("id") == id_:
                    result["message"] = message
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(max(0.0, deadline - time.monotonic()))
        if "message" not in result:
            self.child.kill()
            fail(f"no answer to request {id_} within {LINE_DEADLINE_S} s; stderr:\n{''.join(self.stderr)}")
        return result["message"]

    def finish(self) -> int:
        self.child.stdin.close()
        try:
            return self.child.wait(LINE_DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.child.kill()
            fail("the bridge did not exit after the end of its input")


def legacy_session(argv: list) -> float:
    """A 2025-11-25 session through the bridge `argv` starts (in front of
    mcp-example-server); the seconds from its start to the initialize result."""
    command = argv[0]
    session = Session([str(word) for word in argv])
    session.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "check-packages", "version": "1"}}})
    init = session.answer(0)
    first_answer = time.monotonic() - session.started
    if init.get("result", {}).get("serverInfo", {}).get("name") != "mcp-example-server":
        fail(f"{command}: initialize answered {init}")
    session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    session.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "echo", "arguments": {"text": "installed"}}})
    called = session.answer(1)
    if called.get("result", {}).get("content", [{}])[0].get("text") != "installed":
        fail(f"{command}: tools/call answered {called}")
    code = session.finish()
    if code != 0:
        fail(f"{command} exited {code}; stderr:\n{''.join(session.stderr)}")
    return first_answer
