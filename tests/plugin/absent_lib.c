/* absent_lib.c — a library that the loader's tests keep off every searched path, so that the
 * fake plugin that needs it shows how a missing library is reported. */
int cpb_absent_answer(void)
{
    return 7;
}
