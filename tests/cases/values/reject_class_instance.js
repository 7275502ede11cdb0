// class instances do not cross
class A { constructor() { this.x = 1; } }
return [new A()];
