let abstract = 1; abstract++; return abstract
