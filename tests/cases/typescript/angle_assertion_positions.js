const get = (o: unknown): number =>
  (<{ a: number }><unknown>o).a;
return get(<any>null);
