const f = (...x: any[]) => x; return f(<number>1, <string>"s", <any>null)
