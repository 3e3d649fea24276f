"""Implementations of the actions declared in specs/actions. Each is ``fn(ctx, **arguments) -> str``."""
