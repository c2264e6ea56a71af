"""A copy of a JSON value (dicts, lists and scalars, as json.loads gives them): what copy.deepcopy makes of one,
without deepcopy's memo and dispatch, which made it twice as slow on the tool schemas every proxied request copies
(docs/performance.md). A tuple is copied as a tuple; anything else is shared, as deepcopy shares a string."""


def json_copy(value):
    if isinstance(value, dict):
        return {key: json_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(json_copy(item) for item in value)
    return value
