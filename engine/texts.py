"""Every default text the engine sends to a model or writes to the log (SPEC §5), in one place."""

import json

TOOL_NAME_PLACEHOLDER = "[tool_name]"

RESTRICTED_REPEAT = (
    'Error: The tool "[tool_name]" may only be called once per response. None of the tool calls in '
    "this response were executed. Call it once, wait for its result, then call it again if you need to."
)
COLLATERAL = (
    "Error: This tool call was not executed, because the tool(s) {names} in the same response may only "
    "be called once per response."
)
UNKNOWN_TOOL = "Unknown tool."
INVALID_ARGUMENTS = "Error: invalid arguments for {name}: {detail}"
ALREADY_IN_CONTEXT = "Already in your context."
CALL_LIMIT = "Error: {name} may be called at most {limit} times per run."
ARGUMENT_NOT_ALLOWED = "Error: invalid value for {property} in {tool}: {value} is not one of {allowed}."
REPEATED_CALL = (
    "Error: {tool} was already called with these arguments {count} times in this run. Use the earlier result."
)
ARTIFACT_PLACEHOLDER = "{{{{artifact:{tool}:{number}}}}}"
UNKNOWN_ARTIFACT = "{placeholder} is not an artifact of this run"
PROXY_COLLATERAL = (
    "Error: This tool call was not executed, because another call in the same response was rejected. Call it again "
    "if you still need it."
)
TOOLS_DISABLED = "Error: Tools are not available for this request. Answer without calling tools."
MAX_ROUNDS = (
    "I was unable to fully answer your question within the allowed number of processing steps. "
    "Please try rephrasing or narrowing your question."
)
REQUIRE_USAGE_REMINDER = (
    "Reminder: The following tools should be used based on the instructions, but were not used: "
    "{names}. Please make sure to use them in your next response."
)
RESTRICTION_LOG_ENTRY = (
    'The agent "{agent_id}" called the single-call tool(s) {names} multiple times in one response. '
    "All {count} tool calls in the response were rejected."
)
REVIEWER_REJECTED = "Error: A reviewer rejected this tool call."
APPROVAL_TIMED_OUT = (
    "Error: This tool call was not executed: it requires approval, and no one decided on it within {seconds} seconds."
)
STOPPED_CALL = "Error: This tool call was not executed, because a person stopped the run."
# What a proxied client gets when a person stops its run while its response waits for approval (SPEC §8).
PROXY_STOPPED = "A person stopped this run in Toolgate while its tool calls waited for approval: none of them was run."
RETRIEVED_CONTEXT_HEADER = "Documents retrieved for this question (cite them by id):"

SCRIPT_EXHAUSTED = "Script exhausted."
FINAL_ANSWER_WITHOUT_TOOLS = "Final answer without tools."


def quoted_names(names):
    """`"a", "b"`: how the texts list tool names."""
    return ", ".join(f'"{name}"' for name in names)


def restricted_repeat_message(tool_name, custom_message=""):
    return (custom_message or RESTRICTED_REPEAT).replace(TOOL_NAME_PLACEHOLDER, tool_name)


def collateral_message(restricted_names):
    return COLLATERAL.format(names=quoted_names(restricted_names))


def json_value_text(value):
    """A JSON value as the texts show it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def argument_not_allowed_message(tool_name, property_name, value, allowed):
    return ARGUMENT_NOT_ALLOWED.format(
        property=property_name,
        tool=tool_name,
        value=json_value_text(value),
        allowed=", ".join(json_value_text(item) for item in allowed),
    )


def artifact_placeholder(tool_name, number):
    return ARTIFACT_PLACEHOLDER.format(tool=tool_name, number=number)


def reviewer_rejected_message(reason=""):
    """The reviewer's rejection, followed by the reason when one was given."""
    return f"{REVIEWER_REJECTED} {reason}" if reason else REVIEWER_REJECTED
