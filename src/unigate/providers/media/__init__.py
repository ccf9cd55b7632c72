"""Media upstreams with Bearer keys and their own error bodies: Fish Audio and Stability AI."""
