"""Flask-WTF forms, one module per area: agents, runs (and the request and tool settings both share), providers,
tool servers, documents, cases, and the argument, client-tool and tool-picker parts of the agent form; `fields`
holds what they all share.

The forms only turn posted strings into the JSON form (numbers, booleans, the parsed script) and back. Whether
the values are acceptable is decided in one place, engine.config.validate_agent (through store.agents), whose
errors `fields.apply_errors` puts next to the fields they name — the same rules for the pages, the API and the CLI.
The run form checks nothing either: engine.config decides when the run starts, and computes which of the posted
settings differ from the stored agent (engine.config.overrides_between): only those are the run's overrides.
"""
