// @refuse: decorator
function dec(...a: any[]) {}
class A { m(@dec x: number) {} }
return 1
