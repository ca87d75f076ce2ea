/* no_onload: a shared library without JVM_OnLoad, for the loader's error
 * test (it is not a JVMPI agent). */
int not_an_agent(void);
int not_an_agent(void) { return 42; }
