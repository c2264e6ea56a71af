"""The per-argument settings of one tool on its settings form: for each top-level argument of the tool's schema, a
rule (action, values, hide) and a description for the model, posted as tools-TOOL-arguments-ARGUMENT-KEY.

Like the rest of the forms, these only turn posted text into the JSON form (`argument_rules`,
`argument_descriptions`) and back; engine.config decides whether the values fit the argument. Values are one per
line: taken as they are for a string argument, read as JSON otherwise (a line that is not JSON stays text, so the
error names the argument's type).
"""

import json

from wtforms import BooleanField, Form, FormField, SelectChoice, SelectField, TextAreaField

from engine.arguments import FORCE_VALUE, ONLY_ALLOW

ACTION_CHOICES = [
    SelectChoice("", "No rule"),
    SelectChoice(ONLY_ALLOW, "Only allow these values"),
    SelectChoice(FORCE_VALUE, "Force this value"),
]


class ArgumentForm(Form):
    """One argument's rule and description; a sub-form."""

    action = SelectField(
        "Rule",
        choices=ACTION_CHOICES,
        validate_choice=False,
        description="Only allow: the model sees the values as a list to choose from, and another value is "
        "rejected. Force: the call runs with the value, whatever the model sent.",
    )
    values = TextAreaField(
        "Values",
        description="One per line (a forced value: exactly one). Written as JSON (5, true, [1, 2]) unless the "
        "argument is a string.",
        render_kw={"rows": 3, "spellcheck": "false"},
    )
    hide = BooleanField(
        "Hide from the model",
        description="Leave the argument out of the schema the model sees; the forced value is always sent.",
    )

    schema = {}  # the argument's JSON Schema, set per argument by arguments_field()

    def rule(self):
        """The posted rule in the JSON form, or None when there is none (no action and not hidden)."""
        if not self.action.data and not self.hide.data:
            return None
        values = parse_values(self.values.data, self.schema) if self.action.data else []
        return {"action": self.action.data or "", "values": values, "hide": self.hide.data}


def _is_text(schema):
    """Whether an argument takes only strings, so that its values are typed without JSON quotes."""
    kind = schema.get("type")
    if kind is None and isinstance(schema.get("enum"), list) and schema["enum"]:
        return all(isinstance(value, str) for value in schema["enum"])
    return kind == "string" or kind == ["string"]


def parse_values(text, schema):
    values = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        if _is_text(schema):
            values.append(line)
            continue
        try:
            values.append(json.loads(line))
        except (ValueError, RecursionError):  # nested too deeply to read is no JSON either
            values.append(line)
    return values


def _reads_as_itself(value):
    """Whether parse_values reads the string back as it is, unquoted: when it is no JSON."""
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return value == value.strip() and "\n" not in value
    return False


def values_text(values, schema):
    """The values as the textarea shows them, one per line: the inverse of parse_values."""
    text = _is_text(schema)
    return "\n".join(
        value if isinstance(value, str) and (text or _reads_as_itself(value)) else json.dumps(value, ensure_ascii=False)
        for value in values
    )


def _argument_form_class(name, schema):
    original = schema.get("description") if isinstance(schema, dict) else None
    keep = f" Leave empty to keep: “{original}”" if original else " Leave empty to send none."
    description = TextAreaField(
        "Description for the model",
        description=f"Replaces this argument's description in the schema the model sees.{keep}",
        render_kw={"rows": 2},
    )
    attributes = {"argument_description": description, "schema": schema if isinstance(schema, dict) else {}}
    return type(f"ArgumentForm_{name}", (ArgumentForm,), attributes)


def arguments_field(parameters):
    """A sub-form with one ArgumentForm per top-level argument of a tool's JSON Schema (none without one)."""
    properties = (parameters or {}).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    fields = {name: FormField(_argument_form_class(name, schema), label=name) for name, schema in properties.items()}
    return FormField(type("ArgumentsForm", (Form,), fields))


def argument_settings(arguments_form):
    """(argument_rules, argument_descriptions) of a tool's posted arguments sub-form."""
    rules, descriptions = {}, {}
    for argument in arguments_form:
        rule = argument.form.rule()
        if rule is not None:
            rules[argument.short_name] = rule
        text = (argument.form.argument_description.data or "").replace("\r\n", "\n")
        if text:
            descriptions[argument.short_name] = text
    return rules, descriptions


def arguments_form_data(settings, parameters):
    """A tool's argument_rules and argument_descriptions as the arguments sub-form's data."""
    properties = (parameters or {}).get("properties")
    properties = properties if isinstance(properties, dict) else {}
    rules, descriptions = settings.get("argument_rules", {}), settings.get("argument_descriptions", {})
    data = {}
    for name, schema in properties.items():
        rule = rules.get(name, {})
        data[name] = {
            "action": rule.get("action", ""),
            "values": values_text(rule.get("values", []), schema if isinstance(schema, dict) else {}),
            "hide": rule.get("hide", False),
            "argument_description": descriptions.get(name, ""),
        }
    return data


def argument_error_field(tool_form, parts):
    """The field for an error key split on its dots (tools, TOOL, argument_rules | argument_descriptions, ARGUMENT
    [, action | values | hide]), or None when the key is about no argument on the form."""
    if len(parts) < 4 or parts[2] not in ("argument_rules", "argument_descriptions"):
        return None
    if parts[3] not in tool_form.arguments.form:
        return None
    argument = tool_form.arguments.form[parts[3]].form
    if parts[2] == "argument_descriptions":
        return argument.argument_description
    return argument[parts[4]] if len(parts) == 5 and parts[4] in ("values", "hide") else argument.action
