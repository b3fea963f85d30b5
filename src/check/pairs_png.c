/* SPDX-License-Identifier: GPL-2.0-or-later */
/* pairs.png: the bandwidth matrix as a heatmap, drawn by gnuplot on
 * rank 0's node. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pairs.h"
#include "pairs_report.h"
#include "parse.h"

/* gnuplot: $DISTENV_GNUPLOT, else the first gnuplot in PATH. A
 * DISTENV_GNUPLOT that is empty or not an executable is named as such
 * (it is the user's choice, not a missing gnuplot). */
int de_pr_find_gnuplot(char *out, size_t len, struct de_err *err)
{
	const char *env = getenv("DISTENV_GNUPLOT"), *path = getenv("PATH");
	char dirs[4096], *d, *save = NULL;

	if (de_env_str("DISTENV_GNUPLOT", env, "the path of gnuplot", err))
		return -1;
	if (env != NULL) {
		snprintf(out, len, "%s", env);
		if (access(out, X_OK) != 0)
			return de_errf(err, "DISTENV_GNUPLOT=\"%s\": not an executable file (%s): pairs.png is drawn by gnuplot; "
				       "point DISTENV_GNUPLOT at it, or unset it to use the gnuplot in PATH",
				       env, strerror(errno));
		return 0;
	}
	snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
	for (d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/gnuplot", *d ? d : ".");
		if (access(out, X_OK) == 0)
			return 0;
	}
	return de_errf(err, "--pairs-out: pairs.png is drawn by gnuplot, and no gnuplot is on this node "
		       "(not in PATH): install it (Debian/Ubuntu: apt-get install gnuplot-nox) or set DISTENV_GNUPLOT");
}

unsigned de_pairs_png_size(unsigned n)
{
	unsigned s = 200 + 40 * n;

	return s < 640 ? 640 : s > 4000 ? 4000 : s;
}

/* The matrix for gnuplot: row -> column GB/s, NaN on the diagonal and
 * for failed pairs (left blank, labelled FAIL). */
static int fill_dat(const struct de_check *c, FILE *fp)
{
	uint32_t i, j, n = c->pairs->n;

	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			if (i == j || de_pr_failed(de_pr_res(c, i, j)))
				fprintf(fp, "%sNaN", j ? " " : "");
			else
				fprintf(fp, "%s%.6g", j ? " " : "", de_pr_directed_bw(c, i, j) / 1e9);
		}
		fputc('\n', fp);
	}
	return 0;
}

static const char *png_dir;

static void gp_label(FILE *fp, const struct de_check *c, uint32_t x)
{
	const char *mark = "";
	size_t i;

	for (i = 0; i < c->pairs->v.nfind; i++) {
		const struct de_finding *f = &c->pairs->v.find[i];

		if (f->a == x && f->kind == DE_FIND_NODE_FAIL)
			mark = " (FAIL)";
		else if (f->a == x && f->kind == DE_FIND_SLOW_NODE && !*mark)
			mark = " (SLOW)";
	}
	fprintf(fp, "\"%s%s\" %u", de_pr_name(c, x), mark, x);
}

static int fill_gp(const struct de_check *c, FILE *fp)
{
	const struct de_pairs_state *s = c->pairs;
	unsigned size = de_pairs_png_size(s->n);
	uint32_t i, j;

	fprintf(fp, "set terminal pngcairo size %u,%u font 'sans,10'\n", size, size);
	fprintf(fp, "set output '%s/.pairs.png.tmp'\n", png_dir);
	fprintf(fp, "set title 'distenv pair bandwidth, GB/s, row -> column (median %.2f)'\n",
		s->v.median_bw / 1e9);
	fprintf(fp, "unset key\nset size square\nset xrange [-0.5:%u.5]\nset yrange [%u.5:-0.5]\n",
		s->n - 1, s->n - 1);
	fprintf(fp, "set cbrange [0:*]\nset cblabel 'GB/s'\nset palette defined (0 '#b2182b', 0.5 '#fee08b', 1 '#1a9850')\n");
	fprintf(fp, "set xtics rotate by 45 right (");
	for (i = 0; i < s->n; i++) {
		fputs(i ? ", " : "", fp);
		gp_label(fp, c, i);
	}
	fprintf(fp, ")\nset ytics (");
	for (i = 0; i < s->n; i++) {
		fputs(i ? ", " : "", fp);
		gp_label(fp, c, i);
	}
	fprintf(fp, ")\n");
	for (i = 0; i < s->n; i++)
		for (j = 0; j < s->n; j++) {
			const struct de_pair_result *p = i == j ? NULL : de_pr_res(c, i, j);

			if (p != NULL && de_pr_failed(p))
				fprintf(fp, "set label 'FAIL' at %u,%u center front tc rgb 'black'\n", j, i);
			else if (p != NULL && de_pairs_pair_named(&s->v, p))
				fprintf(fp, "set label '!' at %u,%u center front tc rgb 'black'\n", j, i);
		}
	fprintf(fp, "set object 1 rect from graph 0,0 to graph 1,1 back fc rgb '#dddddd' fs solid\n");
	fprintf(fp, "plot '%s/.pairs.dat' matrix with image\n", png_dir);
	return 0;
}

int de_pr_draw_png(const struct de_check *c, struct de_err *err)
{
	const char *dir = c->o.pairs_out;
	char gp[4200], dat[4300], script[4300], out[4300], png[4300], logp[4300], why[300] = "";
	FILE *lf;
	pid_t pid;
	int st = 0;

	if (de_pr_find_gnuplot(gp, sizeof(gp), err))
		return -1;
	png_dir = dir;
	snprintf(dat, sizeof(dat), "%s/.pairs.dat", dir);
	snprintf(script, sizeof(script), "%s/.pairs.gp", dir);
	snprintf(out, sizeof(out), "%s/.pairs.png.tmp", dir);
	snprintf(png, sizeof(png), "%s/pairs.png", dir);
	snprintf(logp, sizeof(logp), "%s/.pairs.gp.log", dir);
	/* gnuplot's input, hidden and removed after it ran. */
	if (de_pr_write_whole(dir, ".pairs.dat", fill_dat, c, err))
		return -1;
	if (de_pr_write_whole(dir, ".pairs.gp", fill_gp, c, err)) {
		unlink(dat);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* Its remarks (e.g. on the blank diagonal) are not ours to print;
		 * its errors are kept in .pairs.gp.log for the failure below. */
		int devnull = open("/dev/null", O_WRONLY);
		int log = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (devnull >= 0)
			dup2(devnull, 1);
		if (log >= 0)
			dup2(log, 2);
		execl(gp, gp, script, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		if ((lf = fopen(logp, "r")) != NULL) {
			while (fgets(why, sizeof(why), lf) != NULL && strstr(why, "warning") != NULL)
				;
			fclose(lf);
			why[strcspn(why, "\n")] = '\0';
		}
		unlink(out);
		unlink(dat);
		unlink(script);
		unlink(logp);
		return de_errf(err, "--pairs-out: %s failed (exit status %d%s%s): pairs.png not written", gp,
			       WIFEXITED(st) ? WEXITSTATUS(st) : -1, why[0] ? ": " : "", why);
	}
	unlink(dat);
	unlink(script);
	unlink(logp);
	if (rename(out, png) != 0)
		return de_errf(err, "--pairs-out: cannot rename %s to %s: %s", out, png, strerror(errno));
	return 0;
}
