"""An external agent program that speaks MCP's JSON-RPC by hand, badly on purpose, for
tests/test_models_adversarial.py.

``raw_rpc.py MODE [JSON]``: the modes write garbage, notifications, requests before
``initialize`` or malformed ``report_usage`` calls, then (mostly) ``finish``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

_next_id = 0


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send a request and read lines until its answer (skipping anything else)."""
    global _next_id
    _next_id += 1
    send({"jsonrpc": "2.0", "id": _next_id, "method": method, "params": params})
    for line in sys.stdin:
        answer = json.loads(line)
        if answer.get("id") == _next_id:
            return answer  # type: ignore[no-any-return]
    raise SystemExit(9)  # input closed before the answer


def initialize() -> None:
    request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def call(name: str, arguments: Any) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": arguments})


def text_of(answer: dict[str, Any]) -> str:
    result = answer.get("result") or {}
    content = result.get("content") or [{}]
    flag = "error: " if result.get("isError") or "error" in answer else ""
    return flag + str(content[0].get("text", answer.get("error")))


def main(mode: str, arg: str) -> None:
    if mode == "garbage":
        print("starting up...", flush=True)
        print("{not json", flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": 99}), flush=True)  # a reply to nothing
        initialize()
        print("\x00\xff binary-ish", flush=True)
        call("finish", {"final_reply": "survived"})
    elif mode == "notify":
        initialize()
        for method in (
            "notifications/progress",
            "notifications/cancelled",
            "notifications/roots/list_changed",
            "notifications/bogus",
        ):
            send({"jsonrpc": "2.0", "method": method, "params": {"progressToken": 1}})
        call("finish", {"final_reply": "notified"})
    elif mode == "call_before_initialize":
        answer = call("list_orders", {"customer_id": "C-100"})
        initialize()
        call("finish", {"final_reply": text_of(answer)[:200]})
    elif mode == "usage":
        initialize()
        answer = call("report_usage", json.loads(arg))
        call("finish", {"final_reply": text_of(answer)[:200]})
    elif mode == "finish_with":  # finish called with these arguments, then a plain finish
        initialize()
        answer = call("finish", json.loads(arg))
        call("finish", {"final_reply": "second: " + text_of(answer)[:200]})
    elif mode == "long_line":  # a call on a line longer than the evaluator reads, unanswered
        initialize()
        message = {"text": "x" * int(arg)}
        send(
            {
                "jsonrpc": "2.0",
                "id": 77,
                "method": "tools/call",
                "params": {"name": "send_message_to_user", "arguments": message},
            }
        )
        call("finish", {"final_reply": "survived"})
    elif mode == "http_post":  # one large POST to the HTTP transport; its status to stderr
        import os
        import urllib.error
        import urllib.request

        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "x" * int(arg)})
        post = urllib.request.Request(
            os.environ["GROUNDSTATE_MCP_URL"],
            data=body.encode(),
            headers={
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
            },
        )
        try:
            with urllib.request.urlopen(post, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        print(f"status {status}", file=sys.stderr, flush=True)
    elif mode == "parallel":  # several calls in flight at once, then their answers
        initialize()
        orders = json.loads(arg)
        for number, order in enumerate(orders, start=100):
            send(
                {
                    "jsonrpc": "2.0",
                    "id": number,
                    "method": "tools/call",
                    "params": {"name": "get_order", "arguments": {"order_id": order}},
                }
            )
        answers: dict[int, str] = {}
        for line in sys.stdin:
            answer = json.loads(line)
            answers[answer["id"]] = text_of(answer)
            if len(answers) == len(orders):
                break
        ordered = [answers[n][:40] for n in sorted(answers)]
        call("finish", {"final_reply": json.dumps(ordered)})
    elif mode == "exit_after_initialize":
        initialize()
    elif mode == "exit_at_once":
        pass
    elif mode == "close_stdout":  # closes its output and lingers
        initialize()
        sys.stdout.close()
        time.sleep(1000)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
