// Used by named_expression_in_module: a member read of undefined inside a loaded module.
export function port(o) {
  return o.config.port;
}
