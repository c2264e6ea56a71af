"""Helpers for the integration tests: an app over a temporary database and what a browser posts for an agent.
(A rendered form is read by tests/html_reader.py.)"""

import json
import shutil

from flask.testing import FlaskClient

from app import create_app
from engine.config import AGENT_DEFAULTS, TOOL_SETTING_DEFAULTS


class ApiShapeCheckingClient(FlaskClient):
    """The test client, checking every error the JSON API answers against its one shape (blueprints.json_error),
    so no test can pass over an error in another shape."""

    def open(self, *args, **kwargs):
        response = super().open(*args, **kwargs)
        if response.status_code >= 400 and response.request.path.startswith("/api/"):
            assert response.is_json, response.data
            body = response.get_json()
            assert {"error", "field", "errors"} <= set(body), body
            assert isinstance(body["errors"], dict), body
            if body["field"] is not None:
                assert body["error"].startswith(f"{body['field']}: ") and body["field"] in body["errors"], body
        return response


def make_app(tmp_path, database_from=None, **config):
    """The app over tmp_path. Without `database_from` it starts on no database, as a fresh install does; with it,
    on a copy of that file, so a test pays for a file copy instead of every migration. With DATABASE_URL, on that
    database instead."""
    if database_from is not None:
        shutil.copyfile(database_from, tmp_path / "toolgate.db")
    settings = {
        "TESTING": True,
        "DATABASE": str(tmp_path / "toolgate.db"),
        "SECRET_KEY": "test secret key",
        "WTF_CSRF_ENABLED": False,
        **config,
    }
    app = create_app(settings, instance_path=str(tmp_path))
    app.test_client_class = ApiShapeCheckingClient
    return app


def agent_form_data(agent):
    """What a browser posts for an agent's JSON form: tools-NAME-KEY fields, unticked boxes absent."""
    agent = {**AGENT_DEFAULTS, **agent}
    data = {
        "label": agent["label"],
        "id": agent.get("id", ""),
        "description": agent["description"],
        "system_prompt": agent["system_prompt"],
        "provider": agent["provider"],
        "model": agent["model"],
        "parallel_tool_calls": {None: "", True: "true", False: "false"}.get(
            agent["parallel_tool_calls"], agent["parallel_tool_calls"]
        ),
        "max_rounds": str(agent["max_rounds"]),
        "on_round_cap": agent["on_round_cap"],
        "max_rounds_message": agent["max_rounds_message"],
        "tool_choice": agent["tool_choice"],
        **{
            key: "" if agent[key] is None else str(agent[key]) for key in ("temperature", "top_p", "seed", "max_tokens")
        },
        "script": agent["script"] if isinstance(agent["script"], str) else json.dumps(agent["script"]),
        "approval_timeout_seconds": str(agent["approval_timeout_seconds"]),
        "approval_webhook": agent["approval_webhook"],
        "revision": str(agent["revision"]),
    }
    for name, settings in agent["tools"].items():
        settings = {**TOOL_SETTING_DEFAULTS, **settings}
        prefix = f"tools-{name}-"
        data[prefix + "enabled"] = "y"
        for key, value in settings.items():
            if key in ("argument_rules", "argument_descriptions"):
                continue
            if isinstance(value, bool):
                if value:
                    data[prefix + key] = "y"
            else:
                data[prefix + key] = str(value)
        data.update(argument_form_data(prefix, settings))
    return data


def argument_form_data(prefix, settings):
    """A tool's argument rules and descriptions as posted: tools-NAME-arguments-ARGUMENT-KEY, values one a line
    (strings as they are, other values as JSON)."""
    data = {}
    for argument, rule in settings["argument_rules"].items():
        field = f"{prefix}arguments-{argument}-"
        data[field + "action"] = rule.get("action", "")
        values = rule.get("values", [])
        data[field + "values"] = "\n".join(value if isinstance(value, str) else json.dumps(value) for value in values)
        if rule.get("hide"):
            data[field + "hide"] = "y"
    for argument, text in settings["argument_descriptions"].items():
        data[f"{prefix}arguments-{argument}-argument_description"] = text
    return data
