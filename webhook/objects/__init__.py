"""One reader per judged kind: a JobSet, Job or Deployment (bytes or a document) in, a ``Workload`` out."""
