// Scaffolding: replaced by the real daemon in the next commits.
int main() { return 1; }
