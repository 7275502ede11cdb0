abstract class A { protected abstract x: number; protected abstract m(): void; public abstract get g(): number } return typeof A
