"""Model solution, notebook 15's build exercise: the notification skill's input schema, as the shipped skill has it.
Never copied to participants."""

my_schema = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email", "description": "Recipient address"},
        "subject": {"type": "string", "minLength": 1, "maxLength": 120, "description": "Subject line"},
        "body": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "Plain-text message"},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}
