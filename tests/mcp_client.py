#!/usr/bin/env python3
"""A real MCP client (the official `mcp` SDK from PyPI) for Kea's tests.

Usage: mcp_client.py PLAN.json. The plan names the server to launch
({"command", "args", "env"}) and the calls to make in order; each call's
outcome is printed as one JSON line: {"ok": result} or {"error": {"code",
"message"}}. Besides the protocol's calls, "touch" creates a file and
"wait_file" waits for one, so a test can change the index between calls.
"""
import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def dumped(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(session, step):
    op = step["op"]
    if op == "list_tools":
        return dumped(await session.list_tools())
    if op == "call_tool":
        return dumped(await session.call_tool(step["name"], step.get("arguments")))
    if op == "list_resources":
        return dumped(await session.list_resources())
    if op == "list_templates":
        return dumped(await session.list_resource_templates())
    if op == "read_resource":
        return dumped(await session.read_resource(step["uri"]))
    if op == "touch":
        open(step["path"], "w").close()
        return {}
    if op == "wait_file":
        deadline = time.monotonic() + step.get("seconds", 120)
        while not os.path.exists(step["path"]):
            if time.monotonic() > deadline:
                raise TimeoutError(step["path"])
            await asyncio.sleep(0.1)
        return {}
    raise ValueError(f"unknown op {op}")


async def main(plan):
    server = StdioServerParameters(command=plan["command"], args=plan["args"], env=plan["env"])
    with open(plan.get("stderr", os.devnull), "w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                started = time.monotonic()
                info = await session.initialize()
                print(json.dumps({"ok": dumped(info), "seconds": time.monotonic() - started}), flush=True)
                for step in plan["calls"]:
                    try:
                        print(json.dumps({"ok": await call(session, step)}, ensure_ascii=False), flush=True)
                    except MCPError as e:
                        print(json.dumps({"error": {"code": e.code, "message": e.message}}, ensure_ascii=False), flush=True)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        asyncio.run(main(json.load(f)))
