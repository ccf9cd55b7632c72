"""The OpenAPI 3.1 description of every public endpoint (`GET /openapi.json`): one module per
family's schemas and operations, `edge.py` for what each endpoint declares itself (auth, error
shape, path parameters), `builder.py` to join them with the endpoint table."""
