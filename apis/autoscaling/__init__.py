"""autoscaling: only the polymorphic Scale type, which /scale subresources speak (k8s.io/api/autoscaling)."""
