"""External agent programs that misbehave at the process and protocol level, for
tests/test_mcp_round5.py. They speak MCP's JSON-RPC by hand (see raw_rpc.py).

``round5.py MODE [ARG]``: every mode that gets to ``finish`` reports what it saw in its
final reply, so a test can assert what the evaluator answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from raw_rpc import call, initialize, request, send, text_of


def linger() -> None:
    """Ignore SIGTERM and the end of input; live on until killed."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    time.sleep(1000)


def main(mode: str, arg: str) -> None:
    if mode == "exit_mid_call":  # a call on its way, then a crash before its answer
        initialize()
        send(
            {
                "jsonrpc": "2.0",
                "id": 50,
                "method": "tools/call",
                "params": {"name": "list_orders", "arguments": {"customer_id": "C-100"}},
            }
        )
        os._exit(5)
    elif mode == "linger_after_finish":  # finishes, then will not leave
        initialize()
        call("finish", {"final_reply": "done, but staying"})
        linger()
    elif mode == "escape_child":  # a child in its own session holding stdout, then finish
        initialize()
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)", arg],
            start_new_session=True,
        )
        call("finish", {"final_reply": "left a child"})
    elif mode == "unexpected_requests":  # requests a server does not serve, and floods
        initialize()
        seen = []
        for method in (
            "sampling/createMessage",
            "roots/list",
            "elicitation/create",
            "resources/list",
            "prompts/list",
            "completion/complete",
            "bogus/method",
            "ping",
        ):
            answer = request(method, {})
            seen.append(f"{method}={'error' if 'error' in answer else 'ok'}")
        for n in range(int(arg)):
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": n, "progress": n},
                }
            )
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "x" * 100},
                }
            )
        call("finish", {"final_reply": " ".join(seen)})
    elif mode == "odd_ids":  # duplicate ids in flight, answers to nothing, odd id types
        initialize()
        get = {"name": "get_order", "arguments": {"order_id": "O-1001"}}
        for ident in (7, 7, "7", None, [1], {"a": 1}, 1.5):
            send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": get})
        send({"jsonrpc": "2.0", "id": 123456, "result": {}})
        send({"jsonrpc": "2.0", "id": 123457, "error": {"code": -1, "message": "no"}})
        send([{"jsonrpc": "2.0", "method": "ping", "id": 8}])  # a batch
        call("finish", {"final_reply": "odd ids sent"})
    elif mode == "flood_calls":  # many calls at once, past the step limit
        initialize()
        for n in range(int(arg)):
            send(
                {
                    "jsonrpc": "2.0",
                    "id": 1000 + n,
                    "method": "tools/call",
                    "params": {"name": "get_order", "arguments": {"order_id": "O-1001"}},
                }
            )
        for _line in sys.stdin:  # read answers until killed
            pass
        linger()
    elif mode == "bad_arguments":  # wrong types, unknown tools, huge arguments
        initialize()
        texts = []
        for name, arguments in (
            ("get_order", {"order_id": 1001}),
            ("get_order", {"order_id": ["O-1001"]}),
            ("get_order", {}),
            ("get_order", {"order_id": "O-1001", "extra": True}),
            ("get_order", [1, 2]),
            ("get_order", "O-1001"),
            ("no_such_tool", {"x": "y" * int(arg)}),
            ("get_order", {"order_id": "O" * int(arg)}),
        ):
            answer = request("tools/call", {"name": name, "arguments": arguments})
            texts.append(text_of(answer)[:30].replace(" ", "_"))
        answer = request("tools/call", {"name": None, "arguments": {}})
        texts.append(text_of(answer)[:30].replace(" ", "_"))
        call("finish", {"final_reply": " ".join(texts)})
    elif mode == "false_claim":  # does nothing, says it did
        initialize()
        call("finish", {"final_reply": "Your refund for the socks has been processed."})
    elif mode == "unread_answers":  # asks, never reads its answers (the pipe fills), sleeps
        initialize()
        for n in range(int(arg)):
            send({"jsonrpc": "2.0", "id": 2000 + n, "method": "tools/list", "params": {}})
        linger()
    elif mode == "call_then_sleep":  # a tool call, then sleeps past the limit before reading
        initialize()
        send(
            {
                "jsonrpc": "2.0",
                "id": 60,
                "method": "tools/call",
                "params": {"name": "get_order", "arguments": {"order_id": "O-1001"}},
            }
        )
        linger()
    elif mode == "initialize_only":  # the whole budget in initialisation
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        linger()
    elif mode == "partial_then_exit":  # half a message, no newline, exit 0
        initialize()
        sys.stdout.write('{"jsonrpc": "2.0", "id": 9, "method": "tools/ca')
        sys.stdout.flush()
    elif mode == "give_up_then_call":  # gives up, then keeps calling and finishes
        initialize()
        answers: list[Any] = [call("give_up", {"reason": "cannot"})]
        answers.append(call("list_orders", {"customer_id": "C-100"}))
        answers.append(call("finish", {"final_reply": "done after all"}))
        linger()
    elif mode == "http_hold":  # half an HTTP request on each of many connections, held
        import socket
        from urllib.parse import urlsplit

        url = urlsplit(os.environ["GROUNDSTATE_MCP_URL"])
        held = []
        for _ in range(int(arg)):
            conn = socket.create_connection((url.hostname, url.port))
            conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
            held.append(conn)
        if os.environ.get("ROUND5_EXIT"):
            os._exit(0)
        linger()
    elif mode == "close_stdin":  # closes its input, then calls and finishes unanswered
        initialize()
        os.close(0)
        for ident, (name, arguments) in enumerate(
            [
                ("list_orders", {"customer_id": "C-100"}),
                ("finish", {"final_reply": "finished deaf"}),
            ],
            start=70,
        ):
            params = {"name": name, "arguments": arguments}
            send({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params})
        linger()
    elif mode == "notify_forever":  # a flood of notifications that never ends
        initialize()
        note = {"jsonrpc": "2.0", "method": "notifications/progress"}
        while True:
            send({**note, "params": {"progressToken": 1, "progress": 1}})
    elif mode == "deep":  # arguments nested ARG deep, raw on the wire, then finish
        initialize()
        depth = int(arg)
        nested = "[" * depth + "]" * depth
        sys.stdout.write(
            '{"jsonrpc": "2.0", "id": 90, "method": "tools/call", "params": {"name": '
            '"get_order", "arguments": {"order_id": "O-1001", "x": ' + nested + "}}}\n"
        )
        sys.stdout.flush()
        answer = call("finish", {"final_reply": "deep sent"})
        print(text_of(answer), file=sys.stderr)
    print(json.dumps({"mode": mode}), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
