class A { readonly
 x = 1 } return Object.keys(new A())
