"""What runs things: called by the blueprints and the CLI, calling the store and the engine."""
