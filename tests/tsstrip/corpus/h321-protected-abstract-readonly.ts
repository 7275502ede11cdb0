abstract class A { protected abstract readonly x: number; } return typeof A
