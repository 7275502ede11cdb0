// BUG: an exec host printing more than host-output makes the call throw an ordinary Error
// (HOST_FUNCTION_ERROR), not BRIDGE_LIMIT as airlock.h documents for AL_LIMIT_HOST_OUTPUT_BYTES.
return await big.f();
