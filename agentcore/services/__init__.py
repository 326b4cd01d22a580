"""Use cases. Services receive their collaborators (ports); they never build them."""
