class A { f = async (x: number): Promise<number> => x } return await new A().f(3)
