"""Per-argument tool settings (SPEC §3, Drupal's `tool_usage_limits`): `argument_rules` and `argument_descriptions`.

One module for the three places they act: the check when an agent is saved (a rule names a real top-level
argument, and its values fit that argument's schema), the schema the model sees (an allow-list becomes an
`enum`, a hidden argument disappears, a description is replaced), and the gate (a forced value replaces whatever
the model sent, before anything is checked; a value off the allow-list is rejected).
"""

from dataclasses import dataclass

from jsonschema import Draft202012Validator

from . import texts
from .json_copy import json_copy

ONLY_ALLOW = "only_allow"
FORCE_VALUE = "force_value"
ACTIONS = ("", ONLY_ALLOW, FORCE_VALUE)
RULE_DEFAULTS = {"action": "", "values": [], "hide": False}


@dataclass(frozen=True)
class ArgumentRule:
    action: str  # ONLY_ALLOW or FORCE_VALUE: a rule without an action is dropped when the agent is validated
    values: tuple
    hide: bool = False

    @property
    def forced_value(self):
        return self.values[0]


def rules_from_json(rules):
    return {name: ArgumentRule(rule["action"], tuple(rule["values"]), rule["hide"]) for name, rule in rules.items()}


# --- Checked when the agent is saved ---------------------------------------------------------------------------


def _argument_names(parameters):
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return list(properties) if isinstance(properties, dict) else []


def _not_an_argument(tool_name, parameters):
    names = _argument_names(parameters)
    takes = f"its arguments: {', '.join(names)}" if names else "it takes none"
    return f"is not an argument of {tool_name} ({takes})"


def value_error(parameters, property_name, value):
    """Why `value` does not fit the property's schema, or None. Checked through the whole schema, so a `$ref` to
    its `$defs` resolves; only the errors about that property count."""
    errors = Draft202012Validator(parameters).iter_errors({property_name: value})
    messages = [error.message for error in errors if list(error.absolute_path)[:1] == [property_name]]
    return "; ".join(messages) or None


def _check_values(errors, where, rule, parameters, property_name):
    action, values = rule["action"], rule["values"]
    if action == ONLY_ALLOW and not values:
        errors[f"{where}.values"] = "must hold at least one allowed value"
    elif action == FORCE_VALUE and len(values) != 1:
        errors[f"{where}.values"] = f"must hold exactly one value to force (got {len(values)})"
    elif parameters is not None:
        for number, value in enumerate(values, start=1):
            problem = value_error(parameters, property_name, value)
            if problem:
                errors[f"{where}.values"] = f"must fit the argument's schema (value {number}: {problem})"
                break


def check_argument_rules(errors, prefix, tool_name, rules, parameters):
    """Put a message in `errors` for every bad rule; return the rules with their defaults filled in and the
    rules without an action dropped. `parameters` is the tool's JSON Schema, or None to skip the checks that
    need it."""
    key = f"{prefix}.argument_rules"
    if not isinstance(rules, dict):
        errors[key] = 'must be an object mapping argument names to {"action", "values", "hide"}'
        return rules
    names = _argument_names(parameters) if parameters is not None else None
    checked = {}
    for property_name, rule in rules.items():
        where = f"{key}.{property_name}"
        if names is not None and property_name not in names:
            errors[where] = _not_an_argument(tool_name, parameters)
            continue
        if not isinstance(rule, dict):
            errors[where] = 'must be an object {"action", "values", "hide"}'
            continue
        for unknown in set(rule) - set(RULE_DEFAULTS):
            errors[f"{where}.{unknown}"] = "is not part of an argument rule (action, values, hide)"
        rule = {**json_copy(RULE_DEFAULTS), **rule}
        shape_errors = len(errors)
        if rule["action"] not in ACTIONS:
            errors[f"{where}.action"] = 'must be "" (no rule), "only_allow" or "force_value"'
        if not isinstance(rule["values"], list):
            errors[f"{where}.values"] = "must be a list of JSON values"
        if not isinstance(rule["hide"], bool):
            errors[f"{where}.hide"] = "must be true or false"
        if len(errors) > shape_errors:
            continue
        if rule["hide"] and rule["action"] != FORCE_VALUE:
            errors[f"{where}.hide"] = "is only possible with a forced value (action force_value)"
        _check_values(errors, where, rule, parameters, property_name)
        if rule["action"]:
            checked[property_name] = rule
    return checked


def check_argument_descriptions(errors, prefix, tool_name, descriptions, parameters, maximum):
    """Like check_argument_rules, for `{argument: description}`; empty descriptions are dropped."""
    key = f"{prefix}.argument_descriptions"
    if not isinstance(descriptions, dict):
        errors[key] = "must be an object mapping argument names to descriptions"
        return descriptions
    names = _argument_names(parameters) if parameters is not None else None
    checked = {}
    for property_name, text in descriptions.items():
        where = f"{key}.{property_name}"
        if names is not None and property_name not in names:
            errors[where] = _not_an_argument(tool_name, parameters)
        elif not isinstance(text, str):
            errors[where] = "must be a string"
        elif len(text) > maximum:
            errors[where] = f"must be at most {maximum:,} characters (got {len(text):,})"
        elif text:
            checked[property_name] = text
    return checked


# --- The schema the model sees -----------------------------------------------------------------------------------


def _remove_properties(schema, names):
    properties = schema.get("properties", {})
    for name in names:
        properties.pop(name, None)
    if isinstance(schema.get("required"), list):
        schema["required"] = [name for name in schema["required"] if name not in names]
        if not schema["required"]:
            del schema["required"]
    return schema


def hidden_arguments(rules):
    return tuple(name for name, rule in rules.items() if rule.hide)


def model_parameters(parameters, rules, descriptions):
    """The schema the model sees: a copy of the tool's, with the hidden arguments removed, each allow-list as
    its argument's `enum` and the argument descriptions replaced."""
    schema = _remove_properties(json_copy(parameters), hidden_arguments(rules))
    properties = schema.get("properties", {})
    for name, rule in rules.items():
        if rule.action == ONLY_ALLOW and isinstance(properties.get(name), dict):
            properties[name]["enum"] = json_copy(list(rule.values))
    for name, text in descriptions.items():
        if isinstance(properties.get(name), dict):
            properties[name]["description"] = text
    return schema


# --- At the gate -----------------------------------------------------------------------------------------------


def _is_one_of(value, allowed):
    # JSON Schema's equality, as the `enum` the model sees has it: 1 equals 1.0, true is not 1.
    return Draft202012Validator({"enum": list(allowed)}).is_valid(value)


def force_values(arguments, rules):
    """(the arguments with each forced value in place of what the model sent, or added where it sent none,
    {argument: forced value}). Done before the schema is checked: the call runs with the forced value whatever the
    model sent, a value off the schema or an argument hidden from it included. The arguments given are not
    modified."""
    forced = {name: json_copy(rule.forced_value) for name, rule in rules.items() if rule.action == FORCE_VALUE}
    if not forced:
        return arguments, {}
    return {**arguments, **json_copy(forced)}, forced


def value_not_allowed(tool_name, arguments, rules):
    """The rejection message for the first value off its allow-list, or None when every value is allowed."""
    for name, rule in rules.items():
        if rule.action == ONLY_ALLOW and name in arguments and not _is_one_of(arguments[name], rule.values):
            return texts.argument_not_allowed_message(tool_name, name, arguments[name], rule.values)
    return None
