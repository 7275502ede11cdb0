class A {} const a: unknown = new A(); return (a as object) instanceof A
