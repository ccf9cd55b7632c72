"""unigate's own endpoints, in no vendor's dialect: health, the API description, and the
unified video API."""
