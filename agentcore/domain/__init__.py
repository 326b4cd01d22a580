"""Pure domain: models, scope rules and errors. No I/O."""
