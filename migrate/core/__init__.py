"""What every engine shares: findings, the rule table and its schema, the plug-in registry,
the shipped data folders, file IO (decode / atomic write), the torch_npu wheel reader, errors."""
