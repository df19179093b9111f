/* The console (backtick): one line of Lua at a time, run as a task in
   the game's state while the game goes on, its values or error printed
   below; history (Up/Down) and completion of global names (Tab). A
   recording keeps the lines typed, and its replay runs them in their
   frames; a line typed in a replay runs at once, outside the recorded
   tasks, to read the state. */
#ifndef DEMO_CONSOLE_H
#define DEMO_CONSOLE_H

#include "game.h"

/* What a line of the scrollback is, for its colour. */
enum { CONSOLE_INPUT, CONSOLE_RESULT, CONSOLE_ERROR, CONSOLE_PRINT, CONSOLE_WARN };

/* Adds the test hooks console_input(text) and console_lines() to the API
   table on top of g->L. */
void console_open(game *g);
/* Adds what the game says to the scrollback (not to stdout: the caller
   has): print's lines (CONSOLE_PRINT), warn's and weft's warnings
   (CONSOLE_WARN); text may hold several lines. */
void console_log(game *g, int kind, const char *text);
/* Once a frame: a line's task that a kill ended (no value, no error
   printed) has its error printed. */
void console_frame(game *g);
/* Opens or closes the console. */
void console_toggle(game *g);
/* A key went down while the console is open: Return runs the line,
   Backspace, Up/Down (history), Tab (completion), Escape closes. */
void console_key(game *g, SDL_Scancode sc);
/* Replaying: runs a line the recording holds as it ran when recorded (a
   task in the game), at the start of the frame it was typed before. */
void console_replay(game *g, const char *line);
/* Text typed while it is open (the backtick that opened it left out). */
void console_text(game *g, const char *text);
/* Draws it when open (over the game and the overlays). */
void console_draw(game *g);

#endif
