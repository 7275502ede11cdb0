interface I { a(): number } interface J { b: string }
class C implements I, J { b = "b"; a(): number { return 1 } }
return new C().a()
