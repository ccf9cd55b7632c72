"""The Files API's files: uploads streamed to the gateway's file store (storage/), one row each
in the database (owner, purpose, size, expiry), counted in the owner key's stored bytes.
`service.FileService` is what the routers and the batch engine use."""
