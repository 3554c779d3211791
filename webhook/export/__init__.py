"""Rules exported for the API server itself: the ValidatingAdmissionPolicy and the mutating policy."""
