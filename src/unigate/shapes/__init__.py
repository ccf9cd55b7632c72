"""Request shapes declared once: each request body the gateway validates is a msgspec `Struct`
(`declare.py`), from which both the router's check (`Shape.check`, a 400 naming the field) and
the body's schema in `/openapi.json` are generated. The families' declarations are the other
modules of this package."""
