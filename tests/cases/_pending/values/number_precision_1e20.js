// ENGINE BUG (QuickJS 2021-03-27): numbers in [1e20, 1e21) are printed with a wrong last digit,
// so 123456789012345680000 reaches a JSON host as 123456789012345670000, a different double.
return 123456789012345680000;
