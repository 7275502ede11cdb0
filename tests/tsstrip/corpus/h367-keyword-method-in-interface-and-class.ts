interface I { delete(): number } class A implements I { delete(): number { return 1 } } return new A().delete()
