// @refuse: decorator
function dec(c: any) { return c }
@dec class A {}
return A
