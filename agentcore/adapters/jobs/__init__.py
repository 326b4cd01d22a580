"""Job queues: in process (embedded mode) and Celery (production)."""
