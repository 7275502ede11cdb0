const x: number = 1;
@dec class A {}
return x;
