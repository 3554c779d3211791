"""The AdmissionReview on the wire: request decoding and response encoding."""
