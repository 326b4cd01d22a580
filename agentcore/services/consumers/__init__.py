"""The platform components that call the service for their own views: the ACE meta-thinker."""
