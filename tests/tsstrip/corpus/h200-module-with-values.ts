// @refuse: namespace
module M { export function f() { return 1 } }
return M.f()
