"""The Responses API's state: stored responses and their retention."""
