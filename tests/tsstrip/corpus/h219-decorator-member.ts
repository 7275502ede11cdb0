// @refuse: decorator
function dec(...a: any[]) {}
class A { @dec m() {} }
return 1
