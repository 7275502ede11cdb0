class A { type: string = "t"; as: number = 1; interface?: boolean } return Object.keys(new A())
