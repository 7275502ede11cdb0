function F(this: any) { return new.target === F } return new (F as any)()
