"""Tools: Python functions and commands an LM may call, with the human in the loop.

* :class:`Tool` -- a function (sync/async, or a chain of steps) with a schema from its type hints;
* :class:`CommandTool` -- commands run as subprocesses with ``${arg}`` placeholders, no shell;
* :class:`ToolResult` -- success (a value) or error (a message), with separate user/LM text;
* approvals -- :class:`Decision`, :class:`TerminalApprover`, :func:`auto_approve`, ...;
* :class:`MCPClient` -- an MCP server's tools (stdio or streamable HTTP) as :class:`MCPTool` objects;
* :class:`Agent` -- the think / call tools / observe loop that ends in the signature's outputs.
"""

from sigform.tools.agent import Agent
from sigform.tools.approval import (
    ApprovalRequest,
    Approver,
    Decision,
    ScriptedApprover,
    TerminalApprover,
    auto_approve,
    auto_cancel,
    auto_reject,
)
from sigform.tools.chain import Chain
from sigform.tools.command import CommandOutput, CommandTool
from sigform.tools.events import TOOL_EVENT_STATUSES
from sigform.tools.mcp import MCPClient, MCPTool
from sigform.tools.result import ToolResult
from sigform.tools.tool import Tool, as_tool
from sigform.tools.trajectory import CallRecord, Step, Trajectory

__all__ = [
    "TOOL_EVENT_STATUSES",
    "Agent",
    "ApprovalRequest",
    "Approver",
    "CallRecord",
    "Chain",
    "CommandOutput",
    "CommandTool",
    "Decision",
    "MCPClient",
    "MCPTool",
    "ScriptedApprover",
    "Step",
    "TerminalApprover",
    "Tool",
    "ToolResult",
    "Trajectory",
    "as_tool",
    "auto_approve",
    "auto_cancel",
    "auto_reject",
]
