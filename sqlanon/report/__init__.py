"""The HTML report on a family: its versions, what they left out, the audit."""
